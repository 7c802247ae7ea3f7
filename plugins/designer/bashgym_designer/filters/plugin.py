"""The DataDesigner plugin object (entry point group `data_designer.plugins`).

Class paths are given as text: DataDesigner imports the config class while it discovers
plugins and the processor class only when a run builds its processors.
"""

from __future__ import annotations

from data_designer.plugins import Plugin, PluginType

filter_plugin = Plugin(
    config_qualified_name="bashgym_designer.filters.config.FilterProcessorConfig",
    impl_qualified_name="bashgym_designer.filters.processor.FilterProcessor",
    plugin_type=PluginType.PROCESSOR,
)
