class PlaceholderModule:
    """An optional dependency that is not installed: any use raises ImportError naming it."""

    def __init__(self, name: str):
        self._name = name

    def placeholder_attr(self, attr: str):
        def fail(*a, **kw):
            raise ImportError(f"{self._name}.{attr} needs the {self._name!r} package")
        return fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise ImportError(f"{self._name}.{attr} needs the {self._name!r} package")
