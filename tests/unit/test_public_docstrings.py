"""Every public object of ``medanon`` and every public member of its classes has a docstring
(issue 33: ``help()`` on what a notebook user completes must say something)."""

from __future__ import annotations

import inspect

import medanon


def _undocumented() -> list[str]:
    missing = []
    for name in medanon.__all__:
        obj = getattr(medanon, name)
        if not inspect.getdoc(obj):
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        for member, value in vars(obj).items():
            if member.startswith("_"):
                continue
            if isinstance(value, property):
                target = value.fget
            elif isinstance(value, (classmethod, staticmethod)):
                target = value.__func__
            elif callable(value):
                target = value
            else:
                continue    # class attributes (names, defaults) document themselves
            if not (getattr(target, "__doc__", None) or "").strip():
                missing.append(f"{name}.{member}")
    return missing


def test_every_public_member_has_a_docstring():
    assert _undocumented() == []
