"""Where the engine's counting passes run: a registry of backends by name (``--backend``).

``cpu``: this process (:class:`matchaudit.engine.passes.LocalBackend`); ``dask``: a dask.distributed
cluster (:class:`matchaudit.engine.dask_backend.DaskBackend`, the optional extra ``distributed``); ``gpu``: a
PyTorch device (:class:`matchaudit.engine.torch_backend.TorchBackend`, the optional extra ``gpu``). Every
backend gives the CPU engine's counts bit for bit. A new backend registers a factory with :func:`register`
(imported lazily, so optional dependencies load only when chosen).
"""

from __future__ import annotations

from typing import Any, Callable

from matchaudit.choices import BACKENDS
from matchaudit.engine.passes import Backend, LocalBackend
from matchaudit.errors import InputError

_FACTORIES: dict[str, Callable[..., Backend]] = {}


def register(name: str, factory: Callable[..., Backend]) -> None:
    """Make ``make_backend(name, **opts)`` call ``factory(**opts)``."""
    _FACTORIES[name] = factory


def names() -> tuple[str, ...]:
    """The registered backend names."""
    return tuple(_FACTORIES)


def make_backend(name: str, **opts: Any) -> Backend:
    """The backend ``name`` with its options (``None`` values are left to the backend's defaults)."""
    check_name(name)
    return _FACTORIES[name](**{k: v for k, v in opts.items() if v is not None})


def check_name(name: str) -> None:
    """A clear error for an unknown backend name (checked even when no counting pass will run)."""
    if name not in _FACTORIES:
        raise InputError(f"backend {name!r}: choose from {', '.join(_FACTORIES)}.", param="backend")


def _cpu(**opts: Any) -> Backend:
    if opts:
        raise InputError(f"the cpu backend takes no options (got {', '.join(sorted(opts))}); they are for dask.")
    return LocalBackend()


def _dask(scheduler: str | None = None, workers: int | None = None, n_parts: int | None = None) -> Backend:
    from matchaudit.engine.dask_backend import DaskBackend

    if scheduler is not None and workers is not None:
        raise InputError("workers sets the size of a local cluster; with a scheduler the cluster's own workers are used.",
                         param="workers")
    if workers is not None and workers < 1:
        raise InputError(f"workers {workers}: give at least 1.", param="workers")
    return DaskBackend(scheduler=scheduler, n_workers=workers or 2, n_parts=n_parts)


def _gpu(device: str = "cuda", method: str = "scatter", **opts: Any) -> Backend:
    from matchaudit.engine.torch_backend import TorchBackend

    if opts:
        raise InputError(f"the gpu backend takes no options (got {', '.join(sorted(opts))}); they are for dask.")
    return TorchBackend(device=device, method=method)


for _name, _factory in zip(BACKENDS, (_cpu, _dask, _gpu), strict=True):
    register(_name, _factory)

__all__ = ["check_name", "make_backend", "names", "register"]
