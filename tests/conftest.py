"""Settings every test shares, applied before any test module is imported."""

from __future__ import annotations

import os

# Before anything imports huggingface_hub: no test may reach the network, and a model
# name that is not on disk must fail at once instead of retrying the hub for a minute.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
