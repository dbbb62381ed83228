"""``[cc.cca]`` settings (issue 6): in progress."""


def parse_cca(ctx, raw, path, nodes):
    from ...scenario import _table
    _table(ctx, path, raw, ())
    return None
