"""Training through NVIDIA NeMo Customizer: upload to the Data Store, create and poll a customization job."""
