"""labkit: hands-on CPU performance-engineering labs in Jupyter, built on numba."""
__version__ = "0.1.0"
