"""The IBA congestion control annex (issue 6): in progress."""


def install(fabric, scn, spec) -> None:
    raise NotImplementedError("the IBA CCA is not implemented yet")
