"""Light package faces: a package's public names, each imported from its module on first use.

A package whose ``__init__`` imported every public name made ``import agent.compression.status``
load the whole compression engine (and through it the store and the provider): importing any
module runs its package's ``__init__`` first. A face built with :func:`lazy_names` imports
nothing; its module-level ``__getattr__`` (PEP 562) imports the module that defines a name the
first time the name is read, as Textual's ``textual.widgets`` does. Type checkers read the
package's ``__init__.pyi`` instead, which re-exports the same names.

Usage, in a package's ``__init__.py``::

    from agent.faces import lazy_names

    __all__, __getattr__ = lazy_names(__name__, {"ChatClient": "agent.provider.client"})
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_names(package: str, where: Mapping[str, str]) -> tuple[list[str], Callable[[str], object]]:
    """The ``__all__`` and the ``__getattr__`` of a light package face.

    Args:
        package: the package's ``__name__``.
        where: each public name -> the dotted name of the module that defines it.

    Returns:
        ``(__all__, __getattr__)``: the names, sorted; and a function that imports the module of
        a name, stores the value in the package (so it is looked up once) and returns it.
        It raises :class:`AttributeError` for a name the face does not offer (as a missing
        attribute does), and whatever importing the module raises.
    """
    names = dict(where)

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return sorted(names), __getattr__
