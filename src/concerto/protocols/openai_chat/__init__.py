"""OpenAI's chat protocol on `concerto serve` (`routes.router`): Concerto as a chat "model".

`request` reads a conversation into Concerto's input, `answer` writes the completion and the
stream of chunks, `routes` serves `/v1/models` and `/v1/chat/completions`.
"""
