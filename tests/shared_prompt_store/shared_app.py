"""The application the answers in store/ were recorded from: it answers a prompt that two evals
share by the eval that asks."""


def answer(prompt, context):
    return "4" if "2+2" in prompt else context.eval_id
