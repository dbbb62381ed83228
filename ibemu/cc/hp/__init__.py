"""The HP congestion-control scheme of seeds 000 and 003 (issue 5): in progress."""


def install(fabric, scn, spec) -> None:
    raise NotImplementedError("the HP scheme is not implemented yet")
