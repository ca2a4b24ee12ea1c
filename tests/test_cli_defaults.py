"""Every default of the command line is its config's: an option left out gives the config class's
own default (`FlowConfig`, `ModelConfig`, `TrainConfig`, `OracleMinimizer`, `Task`), and a help
that states a default states that one."""

import argparse
import re

import equinox as eqx
import pytest

import inductheory as it
from inductheory.cli import build_parser
from inductheory.cli._common import TASK_OPTIONS, config_defaults
from inductheory.cli._flow import flow_config_from_args
from inductheory.cli._oracle import _config as oracle_config_from_args
from inductheory.cli._train import configs_from_args
from inductheory.oracle import OracleMinimizer
from inductheory.trained import ModelConfig, TrainConfig

PARSER = build_parser()
GRID = ("--grid", "beta=2,4")  # `sweep` needs one grid axis
# the configs each subcommand's options set, besides the task
CONFIGS = {
    ("flow",): (it.FlowConfig,),
    ("sweep", "flow"): (it.FlowConfig,),
    ("train",): (ModelConfig, TrainConfig),
    ("sweep", "train"): (ModelConfig, TrainConfig),
    ("oracle",): (OracleMinimizer,),
    ("sweep", "oracle"): (OracleMinimizer,),
}
# Task fields whose command-line default is not `Task`'s, deliberately: the paper's beta
CLI_OWN_TASK_DEFAULTS = {"beta": 4.0}
# "(default X)" or "(default X; ...)" in a help
STATED_DEFAULT = re.compile(r"\(default ([^\s;:,)]+)[;)]")


def parse(command: tuple[str, ...]) -> argparse.Namespace:
    # the options a subcommand requires: a grid axis (`sweep`), the gates (`loss`)
    required = {"sweep": GRID, "loss": ("--uniform",)}.get(command[0], ())
    return PARSER.parse_args([*command, *required])


def _subparser(command: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = PARSER
    for name in command:
        sub = next(
            a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
        parser = sub.choices[name]
    return parser


@pytest.mark.parametrize("command", [("flow",), ("sweep", "flow")], ids=" ".join)
def test_flow_options_left_out_give_flow_config_defaults(command):
    assert eqx.tree_equal(flow_config_from_args(parse(command)), it.FlowConfig())


@pytest.mark.parametrize("command", [("train",), ("sweep", "train")], ids=" ".join)
def test_train_options_left_out_give_model_and_train_config_defaults(command):
    model, config = configs_from_args(parse(command))
    assert eqx.tree_equal(model, ModelConfig()) and eqx.tree_equal(
        config, TrainConfig()
    )


@pytest.mark.parametrize("command", [("oracle",), ("sweep", "oracle")], ids=" ".join)
def test_oracle_options_left_out_give_oracle_minimizer_defaults(command):
    config = oracle_config_from_args(parse(command))
    assert eqx.tree_equal(config, OracleMinimizer())


@pytest.mark.parametrize("command", sorted(CONFIGS) + [("loss",)], ids=" ".join)
def test_every_option_default_is_its_config_default(command):
    """Option by option (also those the tests above cannot see, such as an option a
    subcommand reads itself): a default that is not None is the config field's default."""
    args = vars(parse(command))
    fields = {}
    for cls in CONFIGS.get(command, ()):
        fields.update(config_defaults(cls))
    task = {**config_defaults(it.Task), **CLI_OWN_TASK_DEFAULTS}
    checked = 0
    for dest, value in args.items():
        if dest in TASK_OPTIONS and dest in task:
            assert value == task[dest], (dest, value, task[dest])
            checked += 1
        elif dest in fields and value is not None:
            assert value == fields[dest], (dest, value, fields[dest])
            checked += 1
    assert checked >= 6


@pytest.mark.parametrize("command", sorted(CONFIGS) + [("loss",)], ids=" ".join)
def test_a_default_the_help_states_is_the_default(command):
    fields = {}
    for cls in CONFIGS.get(command, ()):
        fields.update(config_defaults(cls))
    stated = 0
    for action in _subparser(command)._actions:
        match = STATED_DEFAULT.search(action.help or "")
        # an option left as None takes its config's default (`--M`: 1024)
        value = (
            action.default if action.default is not None else fields.get(action.dest)
        )
        if match is None or value is None:
            continue
        text = match.group(1)
        try:
            assert float(text) == float(value), (action.dest, text, value)
        except ValueError:
            assert text == str(value), (action.dest, text, value)
        stated += 1
    assert stated >= 5


def test_a_wrong_default_is_caught():
    """The comparison itself can fail: a flow parser whose --rho default is not FlowConfig's."""
    from inductheory.cli._flow import add_flow_arguments

    parser = argparse.ArgumentParser()
    add_flow_arguments(parser)
    assert eqx.tree_equal(flow_config_from_args(parser.parse_args([])), it.FlowConfig())
    parser.set_defaults(rho=0.2)
    assert not eqx.tree_equal(
        flow_config_from_args(parser.parse_args([])), it.FlowConfig()
    )


def _generated_options():
    from inductheory.cli._flow import FLOW_OPTIONS, FULL_ONLY, SOLVER_OPTIONS
    from inductheory.cli._train import MODEL_OPTIONS, TRAIN_OPTIONS

    flow = FLOW_OPTIONS + FULL_ONLY + SOLVER_OPTIONS
    return [
        (("flow",), it.FlowConfig, flow),
        (("sweep", "flow"), it.FlowConfig, flow),
        (("train",), ModelConfig, MODEL_OPTIONS),
        (("train",), TrainConfig, TRAIN_OPTIONS),
        (("sweep", "train"), ModelConfig, MODEL_OPTIONS),
        (("sweep", "train"), TrainConfig, TRAIN_OPTIONS),
    ]


# Fields of the configs whose options are declared elsewhere: the embedding dimension (`--d`, with
# the task's geometry) and the objective (`add_objective_arguments`, shared with the oracle).
# overlap_penalty: the paper family's coordination term (`train paper`/`matrix
# --overlap-penalty`); the idealized trainer refuses it, so `train` has no option for it
NOT_GENERATED = {"d", "objective", "tau", "coordination", "overlap_penalty"}


@pytest.mark.parametrize(
    "command, cls, options",
    _generated_options(),
    ids=[f"{' '.join(c)} {cls.__name__}" for c, cls, _ in _generated_options()],
)
def test_every_generated_option_has_its_config_default(command, cls, options):
    """Each option generated from a config field: in the parser under its flag, its default the
    field's (None where the option is one mode's only, its help then stating the field's), its
    choices holding the default; every field but `NOT_GENERATED` has one."""
    defaults = config_defaults(cls)
    actions = {a.dest: a for a in _subparser(command)._actions}
    assert {o.name for o in options} == set(defaults) - NOT_GENERATED
    for option in options:
        action = actions[option.name]
        assert action.option_strings == [option.flag]
        field = defaults[option.name]
        assert action.default == (None if option.unset else field), option.name
        if option.unset and field is not None:
            assert STATED_DEFAULT.search(action.help).group(1) == str(field)
        if action.choices is not None:
            assert field in action.choices, option.name


@pytest.mark.parametrize("command", [("train",), ("sweep", "train")], ids=" ".join)
def test_the_paper_optimizer_options_reach_the_train_config(command):
    given = ("--optimizer", "adam", "--betas", "0.9,0.95", "--warmup", "0.02")
    _, config = configs_from_args(parse((*command, *given, "--weight-decay", "0.1")))
    assert (config.optimizer, config.betas, config.warmup, config.weight_decay) == (
        "adam",
        (0.9, 0.95),
        0.02,
        0.1,
    )
