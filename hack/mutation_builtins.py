# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest plugin loaded by hack/mutation.py's test command only.

cosmic-ray's ExceptionReplacer writes ``except CosmicRayTestingException`` into the mutant, a name the
module does not import: without it in builtins any exception reaching that clause becomes a NameError,
and the mutant is "killed" by the tool's own artefact instead of by a test.
"""

import builtins

from cosmic_ray.exceptions import CosmicRayTestingException

builtins.CosmicRayTestingException = CosmicRayTestingException
