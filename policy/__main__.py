"""The CrossGuard policy pack: `pulumi preview --policy-pack policy`."""

import sys
from pathlib import Path

# The pack reuses the project's own rules and planner (components/), one directory up:
# no second copy of any formula.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.validators import PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
