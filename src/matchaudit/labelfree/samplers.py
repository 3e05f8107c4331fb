"""Posterior samplers: NUTS through NumPyro (optional extra ``mcmc``) and an always-available NumPy sampler.

Both take a log density over unconstrained vectors (batched over a leading axis for NumPy; written for
``jax.numpy`` for NUTS), start several chains dispersed around the posterior mode, and return draws shaped
(chains, draws, dim). The NumPy sampler is an adaptive random-walk Metropolis (Haario et al. 2001): the
proposal covariance starts at the Laplace approximation and is re-estimated from the warm-up draws, the
step scale is tuned per chain towards acceptance 0.234.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
from scipy import optimize

from matchaudit.errors import InputError

SamplerName = Literal["auto", "numpyro", "numpy"]
LogDensity = Callable[[np.ndarray], np.ndarray]
Tick = Callable[[int], None]  # called with the number of chain iterations just done (progress)


@dataclass(frozen=True)
class Draws:
    """Posterior draws (chains, draws, dim) and what the sampler reports about itself."""

    theta: np.ndarray
    sampler: str
    info: dict


def numpyro_available() -> bool:
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(name: SamplerName) -> str:
    """``auto`` -> ``numpyro`` when installed, else ``numpy``; an explicit ``numpyro`` must be installed."""
    if name == "auto":
        return "numpyro" if numpyro_available() else "numpy"
    if name == "numpyro" and not numpyro_available():
        raise InputError("sampler 'numpyro' needs the optional extra: pip install 'matchaudit[mcmc]' (or use the numpy sampler)", param="sampler")
    if name not in ("numpy", "numpyro"):
        raise InputError(f"unknown sampler {name!r}; choose auto, numpyro or numpy")
    return name


def _gradient(f: LogDensity, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    e = np.eye(x.size) * h
    v = f(np.concatenate([x + e, x - e]))
    return (v[: x.size] - v[x.size :]) / (2.0 * h)


def _hessian(f: LogDensity, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    d = x.size
    e = np.eye(d) * h
    i, j = np.triu_indices(d)
    pts = np.concatenate([x + e[i] + e[j], x + e[i] - e[j], x - e[i] + e[j], x - e[i] - e[j]])
    v = f(pts).reshape(4, -1)
    hij = (v[0] - v[1] - v[2] + v[3]) / (4.0 * h * h)
    out = np.zeros((d, d))
    out[i, j] = hij
    out[j, i] = hij
    return out


def laplace(f: LogDensity, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mode (L-BFGS from ``x0``) and the inverse negative Hessian there (made positive definite)."""
    res = optimize.minimize(lambda x: -f(x[None])[0], x0, jac=lambda x: -_gradient(f, x), method="L-BFGS-B")
    mode = res.x if np.isfinite(res.fun) else x0
    hess = -_hessian(f, mode)
    vals, vecs = np.linalg.eigh(0.5 * (hess + hess.T))
    vals = np.maximum(vals, 1e-8 * max(vals.max(), 1e-8))
    return mode, (vecs / vals) @ vecs.T


def dispersed_starts(mode: np.ndarray, cov: np.ndarray, chains: int, rng: np.random.Generator) -> np.ndarray:
    """Chain starts drawn from the Laplace approximation with twice its SD (over-dispersed, as R-hat needs)."""
    return mode + 2.0 * rng.standard_normal((chains, mode.size)) @ np.linalg.cholesky(cov).T


def sample_numpy(f: LogDensity, starts: np.ndarray, cov: np.ndarray, warmup: int, draws: int, rng: np.random.Generator,
                 tick: Tick | None = None) -> Draws:
    """Adaptive random-walk Metropolis, all chains advanced together (one batched density call per step).
    ``tick(chains)`` after every step."""
    chains, dim = starts.shape
    chol = np.linalg.cholesky(cov)
    log_scale = np.full(chains, np.log(2.38 / np.sqrt(dim)))
    x = starts.copy()
    lp = np.nan_to_num(f(x), nan=-np.inf)
    total = warmup + draws
    out = np.empty((chains, draws, dim))
    kept = np.empty((chains, warmup, dim))
    accepted = np.zeros(chains)
    refits = {warmup // 4, warmup // 2, (3 * warmup) // 4}
    for t in range(total):
        prop = x + np.exp(log_scale)[:, None] * (rng.standard_normal((chains, dim)) @ chol.T)
        lp_prop = np.nan_to_num(f(prop), nan=-np.inf)
        log_acc = np.minimum(lp_prop - lp, 0.0)
        acc = np.log(rng.random(chains)) < log_acc
        x[acc], lp[acc] = prop[acc], lp_prop[acc]
        if t < warmup:
            kept[:, t] = x
            log_scale += (np.exp(log_acc) - 0.234) / (t + 1.0) ** 0.6
            if t in refits and t >= 2 * dim:
                recent = kept[:, t // 2 : t + 1].reshape(-1, dim)
                emp = np.cov(recent, rowvar=False) + 1e-10 * np.eye(dim) * np.trace(cov) / dim
                chol = np.linalg.cholesky(emp)
                log_scale[:] = np.log(2.38 / np.sqrt(dim))
        else:
            out[:, t - warmup] = x
            accepted += acc
        if tick is not None:
            tick(chains)
    return Draws(out, "numpy", {"acceptance": (accepted / max(draws, 1)).tolist(), "warmup": warmup, "draws": draws})


def sample_numpyro(log_density_jax: Callable, starts: np.ndarray, warmup: int, draws: int, seed: int,
                   tick: Tick | None = None) -> Draws:
    """NUTS (dense mass matrix, float64) with NumPyro; chains in parallel on CPU devices when JAX has not yet
    started (one virtual device per chain), otherwise one after the other. ``tick(1)`` after every iteration of
    every chain, from inside the compiled sampler (a host callback: the draws are the same with or without)."""
    import jax
    import jax.numpy as jnp
    import numpyro
    from numpyro.infer import MCMC, NUTS

    numpyro.set_host_device_count(starts.shape[0])  # takes effect only before JAX's first computation
    jax.config.update("jax_enable_x64", True)
    method = "parallel" if jax.local_device_count() >= starts.shape[0] else "sequential"
    class Ticking(NUTS):
        def sample(self, state, model_args, model_kwargs):
            jax.debug.callback(lambda: tick(1))
            return super().sample(state, model_args, model_kwargs)

    kernel = (NUTS if tick is None else Ticking)(potential_fn=lambda th: -log_density_jax(th), dense_mass=True,
                                                 target_accept_prob=0.85)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=starts.shape[0],
                chain_method=method, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), init_params=jnp.asarray(starts), extra_fields=("diverging",))
    theta = np.asarray(mcmc.get_samples(group_by_chain=True), dtype=float)
    div = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return Draws(theta, "numpyro", {"divergences": div, "warmup": warmup, "draws": draws, "chain_method": method})
