"""``[cc.hp]`` settings (issue 5): in progress."""


def parse_hp(ctx, raw, path, nodes):
    from ...scenario import _table
    _table(ctx, path, raw, ())
    return None
