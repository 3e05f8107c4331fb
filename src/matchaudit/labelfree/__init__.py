"""Label-free and semi-supervised per-group performance estimation (SPE-FR) and the Bayesian Calibration baseline."""

from matchaudit.labelfree.api import NotConverged, estimate
from matchaudit.labelfree.result import Estimate
from matchaudit.labelfree.twopiece import TwoPiece, family

__all__ = ["Estimate", "NotConverged", "TwoPiece", "estimate", "family"]
