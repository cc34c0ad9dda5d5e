"""Where the config tree is: packaged inside a wheel, or `conf/` of a source checkout."""
from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def config_dir() -> Path:
    """`hermes_pipeline/conf` in an installed wheel (conf/ is packaged there), else the checkout's conf/."""
    packaged = PACKAGE_ROOT / "conf"
    if (packaged / "config.yaml").is_file():
        return packaged
    return PACKAGE_ROOT.parent / "conf"


def group_options(group: str) -> list[str]:
    """The option names of a config group (conf/<group>/*.yaml)."""
    return sorted(p.stem for p in (config_dir() / group).glob("*.yaml"))


def model_config(name: str | None) -> DictConfig | None:
    """conf/model/<name>.yaml, if there is one: the summary model's prices when it is not the run's model."""
    path = config_dir() / "model" / f"{name}.yaml" if name else None
    return OmegaConf.load(path) if path is not None and path.is_file() else None
