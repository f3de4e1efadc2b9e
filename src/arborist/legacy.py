"""meta.json of model formats 1 and 2, converted to format 3 on load.

Format 2 stored each component's structure as the structure's own configuration
({"structure": "chain", ...}); format 3 stores its registry call. Format 1 was a lone
parser whose weights were `weights.npy`. The names below are the structure names those
formats wrote; nothing else in the package reads them.
"""
from __future__ import annotations

# structure name in formats 1 and 2 -> (registry name, arguments the registry function does not take)
STRUCTURES = {
    "chain": ("arborist.LinearChain.v1", ()),
    "tree": ("arborist.DependencyTree.v1", ()),
    "pruner": ("arborist.Pruner.v1", ("projective",)),
    "labels": ("arborist.ArcLabels.v1", ()),
}


def structure_call(config) -> dict:
    """The registry call of a format-1/2 structure configuration (returned unchanged when it is
    not one, so that loading reports it)."""
    if not isinstance(config, dict) or config.get("structure") not in STRUCTURES:
        return config
    name, dropped = STRUCTURES[config["structure"]]
    call = {"@structures": name}
    call.update((k, v) for k, v in config.items() if k != "structure" and k not in dropped)
    if config["structure"] == "tree":
        call.setdefault("projective", True)  # written before non-projective decoding existed
    return call


def convert_meta(meta: dict):
    """The component entries of a format-1 or format-2 meta.json, in format 3."""
    if meta.get("format_version") == 1:  # a lone parser
        return [{"name": "parser", "kind": meta.get("kind"), "structure": structure_call(meta.get("structure")),
                 "info": meta.get("info"), "weights_file": "weights.npy"}]
    entries = meta.get("components")
    if not isinstance(entries, list):
        return entries
    return [dict(e, structure=structure_call(e.get("structure"))) if isinstance(e, dict) else e for e in entries]
