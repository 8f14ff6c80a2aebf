"""The elastic material over tetrahedra (3D): its component and how Young's modulus and
Poisson's ratio become the compliances of its two constraints per tet (the solver,
``xpbd_material``, is one of ``pysoft.features.constraints``'s; the method is in
``csrc/src/constraints.c``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pysoft import _validate
from pysoft._ecs import Column, RowView


def _moduli(young: np.ndarray, poisson: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shear modulus mu = E / (2 (1 + nu)) and the bulk modulus K = E / (3 (1 - 2 nu))."""
    return young / (2.0 * (1.0 + poisson)), young / (3.0 * (1.0 - 2.0 * poisson))


def material_compliance(young: Any, poisson: Any, rest_volume: np.ndarray) -> np.ndarray:
    """(M, 2) compliances (alpha_D, alpha_H) = (1 / (2 mu V0), 1 / (K V0)) of tets of rest
    volumes ``rest_volume`` (m^3; constraints.c); ValueError naming ``young`` or ``poisson``
    for a value out of range (young > 0; -1 < poisson < 0.5) or one whose compliances are not
    finite and > 0."""
    m = len(rest_volume)
    e = _validate.per_row("young", young, m)
    if not (np.isfinite(e).all() and (e > 0.0).all()):
        raise ValueError("young must be finite and > 0 (Pa)")
    nu = _validate.per_row("poisson", poisson, m)
    if not (np.isfinite(nu).all() and ((nu > -1.0) & (nu < 0.5)).all()):
        raise ValueError("poisson must be finite, > -1 and < 0.5 (0.5 is incompressible: use 0.49)")
    mu, bulk = _moduli(e, nu)
    with np.errstate(over="ignore", divide="ignore"):
        alpha: np.ndarray = 1.0 / (np.stack([2.0 * mu, bulk], axis=1) * rest_volume[:, None])
    if not (np.isfinite(alpha).all() and (alpha > 0.0).all()):
        raise ValueError("young: a tet's compliance 1 / (2 mu V0) over- or underflows (young too "
                         "small or too large for its volume)")
    return alpha


class MaterialConstraint(RowView):
    """A tetrahedron of an elastic continuum (3D): Young's modulus and Poisson's ratio, kept in
    step with its compliances (constraints.c: a deviatoric and a volume constraint)."""

    __slots__ = ()

    rest_volume = Column("rest_volume", "Rest volume (m^3, > 0 whichever the corners' order).")

    @property
    def young(self) -> float:
        """Young's modulus (Pa), > 0."""
        return float(self.table.arrays["young"][self.row])

    @young.setter
    def young(self, value: float) -> None:
        self._set(_validate.positive("young", value), self.poisson)

    @property
    def poisson(self) -> float:
        """Poisson's ratio, > -1 and < 0.5."""
        return float(self.table.arrays["poisson"][self.row])

    @poisson.setter
    def poisson(self, value: float) -> None:
        self._set(self.young, _validate.finite("poisson", value))

    def _set(self, young: float, poisson: float) -> None:
        a, r = self.table.arrays, self.row
        a["compliance"][r] = material_compliance(young, poisson, a["rest_volume"][r : r + 1])[0]
        a["young"][r], a["poisson"][r] = young, poisson

    @property
    def compliance(self) -> tuple[float, float]:
        """(alpha_D, alpha_H) = (1 / (2 mu V0), 1 / (K V0)) in 1/(Pa m^3), mu the shear and K
        the bulk modulus: derived, read-only."""
        d, h = self.table.arrays["compliance"][self.row]
        return float(d), float(h)

    @property
    def particles(self) -> list[int]:
        """The tet's four particle entities."""
        return [int(e) for e in self.table.arrays["ends"][self.row]]
