"""The DataDesigner plugin object (entry point group `data_designer.plugins`).

Class paths are given as text: DataDesigner imports the config class while it discovers
plugins and the generator class only when a run builds its column generators.
"""

from __future__ import annotations

from data_designer.plugins import Plugin, PluginType

code_validation_plugin = Plugin(
    config_qualified_name="bashgym_designer.validation.config.CodeValidationColumnConfig",
    impl_qualified_name="bashgym_designer.validation.generator.CodeValidationColumnGenerator",
    plugin_type=PluginType.COLUMN_GENERATOR,
)
