"""Claims as code: a file of promises about error rates (:mod:`.spec`), each answered pass / fail / inconclusive
from an audit's identity-aware intervals with the whole file's error controlled (:mod:`.verdicts`, :mod:`.check`)."""

from matchaudit.claims.check import CheckResult, check, preflight, required_level, required_replicates
from matchaudit.claims.spec import Claim, Claims, parse_claims, read_claims

__all__ = ["CheckResult", "Claim", "Claims", "check", "parse_claims", "preflight", "read_claims", "required_level",
           "required_replicates"]
