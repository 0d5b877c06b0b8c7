# SPDX-FileCopyrightText: 2026 The kodo developers
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A stand-in for Spack's `spack.package`, enough to import kodo's recipe and look at it
(test/spack/lint_recipe.py): the directives record what they are given on the class
being defined; nothing is concretized, fetched or built. A name the recipe uses that is
not here fails the lint (NameError): add it here, as Spack spells it."""

_pending = []  # directives of the class body being executed


def _record(kind, *args, **kwargs):
    _pending.append((kind, args, kwargs))


def version(name, **kwargs):
    _record("version", name, **kwargs)


def variant(name, default=None, description="", values=None, multi=False, when=None, **kwargs):
    _record("variant", name, default=default, description=description, values=values,
            multi=multi, when=when, **kwargs)


def depends_on(spec, when=None, type=("build", "link")):
    _record("depends_on", spec, when=when, type=type)


def conflicts(spec, when=None, msg=None):
    _record("conflicts", spec, when=when, msg=msg)


def requires(*specs, when=None, policy="one_of", msg=None):
    _record("requires", *specs, when=when, policy=policy, msg=msg)


def license(spdx, when=None):
    _record("license", spdx, when=when)


def maintainers(*names):
    _record("maintainers", *names)


class InstallError(Exception):
    pass


class PackageBase:
    """Collects the directives of each class body (its own, not its bases')."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._own_directives = list(_pending)
        _pending.clear()

    @classmethod
    def directives(cls):
        """Every directive of the class and its bases, bases first."""
        out = []
        for klass in reversed(cls.__mro__):
            out.extend(klass.__dict__.get("_own_directives", []))
        return out

    def __init__(self, spec, run_tests=False):
        self.spec = spec
        self.run_tests = run_tests

    def __getitem__(self, name):  # self["kokkos"]: the dependency's package
        return self.spec[name].package

    # CMakeBuilder's helpers, as Spack writes them: -DNAME:TYPE=VALUE.
    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        if isinstance(value, (list, tuple)):
            return f"-D{name}:STRING={';'.join(str(v) for v in value)}"
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant=None):
        variant = variant or name.lower()
        if variant not in self.spec.variants:
            raise KeyError(f"define_from_variant({name!r}, {variant!r}): no variant {variant!r}")
        return self.define(name, self.spec.variants[variant])
