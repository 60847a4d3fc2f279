"""The application the stored answers in store/ were recorded from (the earlier store format)."""


def answer(prompt, context):
    if "2+2" in prompt:
        return "4"
    if prompt.startswith("My name is"):
        return "Hello " + prompt.split()[-1].rstrip(".")
    names = [m["content"] for m in context.messages if m["content"].startswith("My name is")]
    return "Your name is " + names[0].split()[-1].rstrip(".") if names else "I do not know"
