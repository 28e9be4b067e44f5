"""Plugins: the registry of scheduling policies, one module each, by name (the filter and
score rules of kube-scheduler's they call are nodefit/)."""

from __future__ import annotations

from typing import Any

from scheduler.framework.plugin import Plugin
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.cdp import CdpPlugin
from scheduler.plugins.conformance import ConformancePlugin
from scheduler.plugins.drf import DrfPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.networktopology import NetworkTopologyPlugin
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.overcommit import OvercommitPlugin
from scheduler.plugins.pdb import PdbPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin
from scheduler.plugins.proportion import ProportionPlugin
from scheduler.plugins.scaleup import ScaleUpPlugin
from scheduler.plugins.sla import SlaPlugin

PLUGINS: dict[str, type[Plugin[Any]]] = {
    plugin.name: plugin
    for plugin in (
        PriorityPlugin,
        GangPlugin,
        ConformancePlugin,
        DrfPlugin,
        PredicatesPlugin,
        ProportionPlugin,
        CapacityPlugin,
        NodeOrderPlugin,
        BinpackPlugin,
        OvercommitPlugin,
        NetworkTopologyPlugin,
        SlaPlugin,
        PdbPlugin,
        CdpPlugin,
        ScaleUpPlugin,
    )
}

__all__ = ["PLUGINS"]
