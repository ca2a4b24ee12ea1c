"""Infrastructure, not science: lanes and sharding, caches and atomic files, stored programs,
devices, memory estimates, progress and tables; and the few counts the memory estimates share with
the model (`_counts`: exact or not, the embedding dimension, selectable offsets, vertex counts),
written here once so that the model and the estimates both import them.

May import: nothing else in `inductheory`.
"""

from ._devices import (
    use_cpu_devices as use_cpu_devices,
)
from ._gc import (
    tune_garbage_collector as tune_garbage_collector,
)
from ._io import (
    CacheWarning as CacheWarning,
    default_cache_dir as default_cache_dir,
)
from ._lanes import (
    broadcast_lanes as broadcast_lanes,
    stack_lanes as stack_lanes,
)
from ._paths import (
    enable_compilation_cache as enable_compilation_cache,
    user_cache_dir as user_cache_dir,
)
from ._records import (
    Record as Record,
)
