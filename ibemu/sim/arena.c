/* Huge-page arenas for Python's small-object allocator (issue 28): the C twin of
 * ibemu/sim/arena.py, built by setup.py beside the mypyc core (ibemu.core.C_SOURCES).
 *
 * A run's objects (events, packets, queue entries, the fabric's nodes and ports) live in
 * obmalloc's arenas of 1 MiB, each its own mmap of 4 KiB pages.  The event loop reads
 * them all over, and on this machine's kernel (transparent huge pages on "madvise") a TLB
 * miss is part of nearly every access: glibc's malloc with huge pages
 * (PYTHONMALLOC=malloc GLIBC_TUNABLES=glibc.malloc.hugetlb=1) ran the 2 ms 648-host case
 * in 0.85-0.88 of the time, although that malloc alone is slower than obmalloc.
 *
 * install() replaces obmalloc's arena allocator (PyObject_SetArenaAllocator, the public
 * API for it): arenas are cut, in order, from chunks of CHUNK bytes aligned to 2 MiB and
 * advised MADV_HUGEPAGE.  An arena obmalloc frees goes to a free list for the next one
 * (kept resident: giving it back would split its huge page); any other request, and the
 * arenas made before install(), go to the allocator it replaced.  Where is no huge-page
 * support, install() says so and changes nothing.  Only memory placement changes, never
 * a result (tests/test_sim_arena.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define CHUNK ((size_t)64 << 20)        /* address space reserved at a time: 64 arenas */
#define MAX_CHUNKS 1024                 /* 64 GiB; past it, the replaced allocator */

static PyObjectArenaAllocator replaced;
static int installed = 0;
static size_t arena_size = 0;           /* obmalloc's (the size of its first request) */
static char *chunks[MAX_CHUNKS];
static int nchunks = 0;
static size_t used = 0;                 /* bytes handed out of the last chunk */
static void *free_list = NULL;          /* freed arenas, linked through their first word */
static Py_ssize_t n_arenas = 0, n_free = 0;
static char *heap_lo = NULL;            /* glibc's heap ([heap] of /proc/self/maps) */
static char *heap_advised = NULL;       /* advised up to here */

static int
ours(const char *p)
{
    for (int i = 0; i < nchunks; i++)
        if (p >= chunks[i] && p < chunks[i] + CHUNK)
            return 1;
    return 0;
}

static int
new_chunk(void)
{
#ifdef MADV_HUGEPAGE
    if (nchunks == MAX_CHUNKS)
        return 0;
    char *raw = mmap(NULL, CHUNK + HUGE_PAGE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return 0;
    char *base = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > raw)
        munmap(raw, (size_t)(base - raw));
    size_t tail = (size_t)(raw + CHUNK + HUGE_PAGE - (base + CHUNK));
    if (tail)
        munmap(base + CHUNK, tail);
    if (madvise(base, CHUNK, MADV_HUGEPAGE) != 0) {
        munmap(base, CHUNK);
        return 0;
    }
    chunks[nchunks++] = base;
    used = 0;
    return 1;
#else
    return 0;
#endif
}

static void *
arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    if (arena_size == 0)
        arena_size = size;
    if (size == arena_size && size <= CHUNK) {
        if (free_list != NULL) {
            void *p = free_list;
            free_list = *(void **)p;
            n_free--;
            return p;
        }
        if ((nchunks > 0 && used + size <= CHUNK) || new_chunk()) {
            void *p = chunks[nchunks - 1] + used;
            used += size;
            n_arenas++;
            return p;
        }
    }
    return replaced.alloc(replaced.ctx, size);
}

static void
arena_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (ptr != NULL && ours((const char *)ptr)) {
        *(void **)ptr = free_list;
        free_list = ptr;
        n_free++;
        return;
    }
    replaced.free(replaced.ctx, ptr, size);
}

/* Objects past obmalloc's 512 bytes (a data packet's 2 KiB, a list's items, a dict's
 * table) come from glibc's malloc, whose heap grows by brk: the heap is advised
 * MADV_HUGEPAGE too, up to the break, and again as it grows (refresh(); glibc asked to
 * grow it 64 MiB at a time, so little of it is touched before its advice).  The same as
 * GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which only works when set before the process
 * starts.  (Setting M_TOP_PAD also fixes glibc's mmap threshold at its 128 KiB default:
 * larger blocks are mapped on their own, as they were at the start of a run.) */
static void
find_heap(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strstr(line, "[heap]") != NULL) {
            unsigned long lo = 0;
            if (sscanf(line, "%lx-", &lo) == 1)
                heap_lo = (char *)lo;
            break;
        }
    }
    fclose(f);
}

static void
advise_heap(void)
{
#ifdef MADV_HUGEPAGE
    if (heap_lo == NULL)
        return;
    char *brk_now = sbrk(0);
    if (brk_now == (char *)-1)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    char *hi = (char *)((uintptr_t)brk_now & ~(page - 1));
    if (hi > heap_advised && madvise(heap_lo, (size_t)(hi - heap_lo), MADV_HUGEPAGE) == 0)
        heap_advised = hi;
#endif
}

static PyObject *
arena_install(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    (void)module;
    if (installed)
        Py_RETURN_TRUE;
    if (!new_chunk())                   /* no huge-page advice here: nothing changes */
        Py_RETURN_FALSE;
    PyObjectArenaAllocator mine = {NULL, arena_alloc, arena_free};
    PyObject_GetArenaAllocator(&replaced);
    PyObject_SetArenaAllocator(&mine);
    installed = 1;
#ifdef M_TOP_PAD
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    find_heap();
    advise_heap();
    Py_RETURN_TRUE;
}

static PyObject *
arena_refresh(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    (void)module;
    if (installed)
        advise_heap();
    Py_RETURN_NONE;
}

static PyObject *
arena_stats(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    (void)module;
    return Py_BuildValue("{s:O,s:n,s:n,s:n,s:n,s:n}", "installed", installed ? Py_True : Py_False,
                         "chunks", (Py_ssize_t)nchunks, "arenas", n_arenas, "free", n_free,
                         "arena_size", (Py_ssize_t)arena_size,
                         "heap_advised", (Py_ssize_t)(heap_advised ? heap_advised - heap_lo : 0));
}

static PyMethodDef arena_methods[] = {
    {"install", arena_install, METH_NOARGS,
     "Put obmalloc's new arenas on huge pages; True when they are (idempotent)"},
    {"refresh", arena_refresh, METH_NOARGS, "Advise the part of glibc's heap grown since the last call"},
    {"stats", arena_stats, METH_NOARGS, "installed, chunks, arenas made, arenas free, arena size, heap advised"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef arena_module = {
    PyModuleDef_HEAD_INIT, "ibemu.sim.arena",
    "Huge-page arenas for Python's small-object allocator (see arena.py)", -1, arena_methods,
    NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC
PyInit_arena(void)
{
    return PyModule_Create(&arena_module);
}
