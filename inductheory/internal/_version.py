"""The library version, in one place: `inductheory.__version__`, the distribution's version
(pyproject.toml reads this attribute) and every cache key (`library_version`).

```python
from inductheory.internal._version import __version__
```
"""

# Caches are keyed on this string: changing it invalidates every stored result.
__version__ = "0.1.0"
