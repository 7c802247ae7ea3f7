"""The DataDesigner toolkit shared by BashGym plugins (being assembled)."""
