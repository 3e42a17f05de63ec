"""agentjail.verl: the reward function as verl calls it, each test case in a jail."""

import json

import pytest

import agentjail
from agentjail import verl

GT = {"inputs": ["2 3\n", "10 -4\n"], "outputs": ["5\n", "6\n"]}
RIGHT = "Here is my solution:\n```python\na, b = map(int, input().split())\nprint(a + b)\n```\n"
HALF = "```python\na, b = map(int, input().split())\nprint(5)\n```"


def test_scores_as_verl_calls_it(client):
    # verl's reward manager: keywords, extra_info, and whatever reward_kwargs it was given.
    kw = dict(data_source="codecontests", extra_info={"split": "train", "index": 0}, client=client)
    assert verl.compute_score(solution_str=RIGHT, ground_truth=json.dumps(GT), **kw) == 1.0
    assert verl.compute_score(solution_str=HALF, ground_truth=GT, **kw) == 0.0
    assert verl.compute_score(solution_str=HALF, ground_truth=GT, continuous=True, **kw) == 0.5
    # Code the policy denies, a crash, a loop past the timeout: the model's failures, score 0.
    for bad in ("import os\nprint(5)", "raise SystemExit(3)", "while True:\n    pass"):
        assert verl.compute_score(solution_str=bad, ground_truth=GT, timeout=0.5, **kw) == 0.0
    # Trailing whitespace is not a wrong answer; another number is.
    gt = {"inputs": [""], "outputs": ["1 2\n3\n"]}
    assert verl.compute_score("x", "print('1 2  ')\nprint(3)\nprint()", gt, client=client) == 1.0
    assert verl.compute_score("x", "print('1 2')\nprint(4)", gt, client=client) == 0.0


def test_batch_and_bad_ground_truth(client):
    scores = verl.compute_score_batch(["a", "b"], [RIGHT, HALF], [GT, GT], [None, None],
                                      client=client, continuous=True)
    assert scores == [1.0, 0.5]
    with pytest.raises(ValueError, match="fn_name"):
        verl.compute_score("a", RIGHT, {"fn_name": "f", "inputs": [[1]], "outputs": [[1]]}, client=client)
    with pytest.raises(ValueError, match="same, non-zero length"):
        verl.compute_score("a", RIGHT, {"inputs": ["1"], "outputs": []}, client=client)


def test_loaded_by_path_as_verl_loads_it(client):
    # verl's custom_reward_function.path: importlib from the file, under a name of its own.
    import importlib.util

    spec = importlib.util.spec_from_file_location("custom_module", verl.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, "compute_score")
    assert fn(data_source="x", solution_str=RIGHT, ground_truth=GT, extra_info=None, client=client) == 1.0


def test_extract_code():
    assert verl.extract_code("no fence") == "no fence"
    assert verl.extract_code("```\nprint(1)\n```\n```python\nprint(2)\n```\n```\nx\n```") == "print(2)\n"
    assert verl.extract_code("```js\na\n```\n```\nprint(3)\n```") == "print(3)\n"


def test_the_default_backend_is_one_client_per_process(binary, monkeypatch):
    monkeypatch.setenv("AGENTJAIL_BINARY", binary)
    try:
        assert verl.compute_score("a", RIGHT, GT) == 1.0
        first = verl._backend
        assert isinstance(first, agentjail.Client)
        assert verl.compute_score("a", HALF, GT) == 0.0
        assert verl._backend is first
    finally:
        verl._close_default()
    assert verl._backend is None
