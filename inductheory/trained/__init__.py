"""The trained compressed model of the task (docs/theory.md §11): each idealization of the
theorems a switch (`ModelConfig`), trained with optax (`TrainConfig`); with every switch at the
theorem's setting, full-batch gradient descent is the explicit Euler scheme of the full flow.

May import: `inductheory.internal`, `inductheory.model`, `inductheory.flow`. The experiments,
figures and command line build on it.

```python
from inductheory.trained import ModelConfig, TrainConfig, init_model, measure
model = init_model(task, ModelConfig(embeddings="learned", d=32, maps="learned"), key)
measure(model, held_out_contexts).phase_accuracy
```
"""

from ._architecture import (
    Architecture as Architecture,
    Attention as Attention,
    Gate as Gate,
    Payload as Payload,
    RetrievalTask as RetrievalTask,
)
from ._checkpoint import load_run as load_run
from ._config import (
    Embeddings as Embeddings,
    GateClass as GateClass,
    Maps as Maps,
    ModelConfig as ModelConfig,
    TrainConfig as TrainConfig,
    Unembedding as Unembedding,
)
from ._interventions import (
    Knockout as Knockout,
    knockout as knockout,
    mean_compressed_outputs as mean_compressed_outputs,
    mean_first_outputs as mean_first_outputs,
    rotate_model_gates as rotate_model_gates,
    shift_correlation as shift_correlation,
    shifted_curve as shifted_curve,
)
from ._local_path import (
    BoundaryGates as BoundaryGates,
    PreviousTokenMass as PreviousTokenMass,
    answered_phases as answered_phases,
    boundary_gates as boundary_gates,
    previous_token_mass as previous_token_mass,
    without_local_window as without_local_window,
)
from ._measures import ModelMeasures as ModelMeasures, measure as measure
from ._mechanisms import (
    GateOffsets as GateOffsets,
    HeadKnockout as HeadKnockout,
    PhaseCurves as PhaseCurves,
    gate_offsets as gate_offsets,
    key_gate_overlap as key_gate_overlap,
    knockout_heads as knockout_heads,
    mean_gate_overlap as mean_gate_overlap,
    mean_head_reads as mean_head_reads,
    paper_gate_tensors as paper_gate_tensors,
    phase_curves as phase_curves,
    rotate_transformer_gates as rotate_transformer_gates,
)
from ._model import CompressedModel as CompressedModel, init_model as init_model
from ._modules import (
    AbstractAttention as AbstractAttention,
    AbstractCompressor as AbstractCompressor,
    Block as Block,
    BlockTrace as BlockTrace,
    CompressedAttention as CompressedAttention,
    CompressorSwitches as CompressorSwitches,
    FullAttention as FullAttention,
    GatedCompressor as GatedCompressor,
    Transformer as Transformer,
    init_transformer as init_transformer,
)
from ._optimizer import (
    OptimizerSettings as OptimizerSettings,
    learning_rate as learning_rate,
    make_optimizer as make_optimizer,
    optimizer_settings as optimizer_settings,
)
from ._run import (
    TrainRun as TrainRun,
    TrainStatistics as TrainStatistics,
    TrainTimings as TrainTimings,
    log_steps as log_steps,
)
from ._stream import (
    StreamMeasures as StreamMeasures,
    stream_masks as stream_masks,
    stream_measures as stream_measures,
)
from ._train import train as train
from ._transformer_train import (
    PhaseMeasures as PhaseMeasures,
    TransformerRun as TransformerRun,
    penalized_loss as penalized_loss,
    sample_retrieval_contexts as sample_retrieval_contexts,
    train_transformer as train_transformer,
)
