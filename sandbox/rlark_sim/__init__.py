"""rlark-sim: an independent simulator of RLark (controller, agent) and RLinf (trainer) for the sandbox."""
