"""Old home of the scenario builders and templates.

shim: removed at merge -- templates are :mod:`ibemu.scenario.templates`, the Python
builders :mod:`ibemu.scenario.builders`.
"""
from __future__ import annotations

from .scenario.builders import *  # noqa: F401,F403
from .scenario.builders import QUICKSTART, quickstart, santos_fig1  # noqa: F401
from .scenario.templates import *  # noqa: F401,F403
from .scenario.templates import (  # noqa: F401
                                 MESSAGE_SIZE,
                                 SANTOS_FIG1_DEFAULTS,
                                 SANTOS_FIG1_SUPERSEDES,
                                 TEMPLATES,
                                 TemplateParamError,
                                 expand_template,
                                 template_names,
)
