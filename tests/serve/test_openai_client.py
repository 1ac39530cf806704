"""`wick serve` through the official `openai` Python client: completions, chat, streaming,
stop strings, logprobs and embeddings, each compared with what `wick generate` / `wick embed`
print for the same prompt, seed and sampling (greedy: token for token)."""
import base64
import json
import re
import struct
import subprocess

import openai

from serve_util import MODEL_ID, Checks, Server, generate, wick_path

PROMPTS = ["Hello", "The quick brown fox", "Once upon a time, in a land far away,"]


def counts(*args):
    """(prompt tokens, generated tokens) that `wick generate` reports on stderr."""
    r = subprocess.run([wick_path(), "generate", "--model", *args], capture_output=True, check=True, text=True)
    p = int(re.search(r"prompt: (\d+) tokens", r.stderr).group(1))
    g = int(re.search(r"generated: (\d+) tokens", r.stderr).group(1))
    return p, g


def test_completions_greedy(client, srv):
    for prompt in PROMPTS:
        r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0)
        want = generate("--prompt", prompt, "--max-tokens", "24", "--temperature", "0")
        assert r.choices[0].text == want, (prompt, r.choices[0].text, want)
        p, g = counts(srv.model, "--prompt", prompt, "--max-tokens", "24", "--temperature", "0")
        assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (p, g), (r.usage, p, g)
        assert r.usage.total_tokens == p + g
        assert r.choices[0].finish_reason == ("length" if g == 24 else "stop")
        assert r.object == "text_completion" and r.model == MODEL_ID and r.id.startswith("cmpl-")


def test_chat_greedy(client, srv):
    for prompt in PROMPTS:
        r = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                           max_tokens=20, temperature=0)
        want = generate("--chat", "--prompt", prompt, "--max-tokens", "20", "--temperature", "0")
        assert r.choices[0].message.content == want, (prompt, r.choices[0].message.content, want)
        assert r.choices[0].message.role == "assistant" and r.object == "chat.completion"
        p, g = counts(srv.model, "--chat", "--prompt", prompt, "--max-tokens", "20", "--temperature", "0")
        assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (p, g)


def test_chat_system_turn(client, srv):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    r = client.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=12, temperature=0)
    want = generate("--chat", "--system", "Be brief.", "--prompt", "Hi there", "--max-tokens", "12", "--temperature", "0")
    assert r.choices[0].message.content == want


def test_sampling_with_seed(client, srv):
    # Sampling is reproducible from the seed, as in `wick generate`.
    for seed in (1, 42):
        r = client.completions.create(model=MODEL_ID, prompt="Hello", max_tokens=24, temperature=0.8, top_p=0.9,
                                      seed=seed, extra_body={"top_k": 40})
        want = generate("--prompt", "Hello", "--max-tokens", "24", "--temperature", "0.8", "--top-p", "0.9",
                        "--top-k", "40", "--seed", str(seed))
        assert r.choices[0].text == want, (seed, r.choices[0].text, want)


def test_penalties(client, srv):
    r = client.completions.create(model=MODEL_ID, prompt="Hello", max_tokens=24, temperature=0,
                                  presence_penalty=1.5, frequency_penalty=0.5)
    want = generate("--prompt", "Hello", "--max-tokens", "24", "--temperature", "0", "--presence-penalty", "1.5",
                    "--frequency-penalty", "0.5")
    assert r.choices[0].text == want


def test_streaming(client, srv):
    for prompt in PROMPTS:
        whole = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0)
        chunks = list(client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0,
                                                stream=True))
        assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
        assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason
        assert all(c.choices[0].finish_reason is None for c in chunks[:-1])

        chat = list(client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                                   max_tokens=20, temperature=0, stream=True,
                                                   stream_options={"include_usage": True}))
        # OpenAI's order: the role first, content deltas, the finish reason, then usage alone.
        assert chat[0].choices[0].delta.role == "assistant"
        assert chat[-1].choices == [] and chat[-1].usage.completion_tokens > 0
        assert chat[-2].choices[0].finish_reason in ("stop", "length")
        assert all(c.usage is None for c in chat[:-1])
        text = "".join(c.choices[0].delta.content or "" for c in chat[:-1])
        want = generate("--chat", "--prompt", prompt, "--max-tokens", "20", "--temperature", "0")
        assert text == want
        p, g = counts(srv.model, "--chat", "--prompt", prompt, "--max-tokens", "20", "--temperature", "0")
        assert (chat[-1].usage.prompt_tokens, chat[-1].usage.completion_tokens) == (p, g)


def test_stop_strings(client, srv):
    full = generate("--prompt", "Once upon a time", "--max-tokens", "64", "--temperature", "0")
    # A stop string from the middle of the text (at its first occurrence), some characters long.
    for start, length in ((20, 3), (35, 1), (8, 5)):
        stop = full[start:start + length]
        cut = full.index(stop)
        for stream in (False, True):
            r = client.completions.create(model=MODEL_ID, prompt="Once upon a time", max_tokens=64, temperature=0,
                                          stop=[stop, "\u2603never"], stream=stream)
            chunks = list(r) if stream else [r]
            text = "".join(c.choices[0].text for c in chunks)
            assert text == full[:cut], (stop, text, full[:cut])
            assert chunks[-1].choices[0].finish_reason == "stop"


def test_logprobs(client, srv):
    r = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "Hello"}],
                                       max_tokens=8, temperature=0, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for t in content:
        assert len(t.top_logprobs) == 3 and t.logprob <= 0
        lps = [a.logprob for a in t.top_logprobs]
        assert lps == sorted(lps, reverse=True)
        # Greedy: the token chosen is the most likely one.
        assert t.top_logprobs[0].token == t.token and abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4
        assert bytes(t.bytes) == t.token.encode()
    c = client.completions.create(model=MODEL_ID, prompt="Hello", max_tokens=6, temperature=0, logprobs=2)
    lp = c.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == c.usage.completion_tokens
    assert all(len(alts) <= 2 for alts in lp.top_logprobs)


def test_logit_bias(client, srv):
    # +100 on one token forces it at every greedy step (the C++ sampler tests cover the rest:
    # bans, ties with the penalties); a token outside the vocabulary is a 400 naming the field.
    c = client.completions.create(model=MODEL_ID, prompt="Hello", max_tokens=5, temperature=0,
                                  logit_bias={"300": 100})
    want = subprocess.run([wick_path(), "detokenize", "--model", srv.model, *["300"] * 5],
                          capture_output=True, text=True, check=True).stdout.rstrip("\n")
    assert c.choices[0].text == want and c.usage.completion_tokens == 5, (c.choices[0].text, want)
    try:
        client.completions.create(model=MODEL_ID, prompt="x", max_tokens=1, logit_bias={"999999": 1})
        raise AssertionError("a token outside the vocabulary was accepted")
    except openai.BadRequestError as e:
        assert e.body["param"] == "logit_bias", e.body


def test_prefix_reuse(client, srv):
    # The engine keeps a finished request's cache in its slot: the next turn of a chat
    # (the same prompt and more) computes only the new tokens, and the text is unchanged.
    msgs = [{"role": "user", "content": "Tell me a story about a dragon."}]
    first = client.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=10, temperature=0)
    msgs += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "More"}]
    again = [client.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=10, temperature=0)
             for _ in range(2)]
    assert again[0].choices[0].message.content == again[1].choices[0].message.content
    assert again[1].usage.prompt_tokens_details.cached_tokens > first.usage.prompt_tokens // 2, again[1].usage
    assert srv.metrics()["wick_cached_prompt_tokens_total"] > 0


def test_models(client, srv):
    ids = [m.id for m in client.models.list()]
    assert ids == [MODEL_ID, "all-MiniLM-L6-v2"], ids


def test_embeddings(client, srv):
    texts = ["The cat sits on the mat.", "A dog runs in the park.", "héllo wörld"]
    r = subprocess.run([wick_path(), "embed", "--json", *texts], capture_output=True, check=True)
    want = [e["embedding"] for e in json.loads(r.stdout)["embeddings"]]
    # The client asks for base64 by default; ask for floats too.
    for fmt in (openai.NOT_GIVEN, "float"):
        got = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts, encoding_format=fmt)
        assert [d.index for d in got.data] == [0, 1, 2]
        for d, w in zip(got.data, want):
            assert len(d.embedding) == len(w) == 384
            assert max(abs(a - b) for a, b in zip(d.embedding, w)) < 1e-6
        assert got.usage.prompt_tokens > 0
    one = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts[0], encoding_format="float")
    assert max(abs(a - b) for a, b in zip(one.data[0].embedding, want[0])) < 1e-6
    # base64 is little-endian float32, as OpenAI encodes it.
    _, body = srv.post("/v1/embeddings", {"input": texts[0], "encoding_format": "base64"})
    floats = struct.unpack("<384f", base64.b64decode(body["data"][0]["embedding"]))
    assert max(abs(a - b) for a, b in zip(floats, want[0])) < 1e-6


def test_client_errors(client, srv):
    for call, exc in [
        (lambda: client.completions.create(model="gpt-4", prompt="x", max_tokens=2), openai.NotFoundError),
        (lambda: client.completions.create(model=MODEL_ID, prompt="x", max_tokens=2, n=2), openai.BadRequestError),
        (lambda: client.embeddings.create(model="nope", input="x"), openai.NotFoundError),
        (lambda: client.completions.create(model=MODEL_ID, prompt="x", max_tokens=100000), openai.BadRequestError),
    ]:
        try:
            call()
        except exc as e:
            assert e.body and "message" in e.body, e.body
        else:
            raise AssertionError(f"no {exc.__name__}")


def test_speculative():
    # --spec ngram and --spec draft (the model drafting for itself): greedy and seeded text as
    # `wick generate` with the same --spec prints it, streamed or not; drafts made and kept.
    repeats = "one two three four, one two three four, one two three four, one two"
    for spec in (["--spec", "ngram"], ["--spec", "draft", "--draft-model", __import__("serve_util").MODEL]):
        with Server(*spec, "--draft-tokens", "4", "--parallel", "2") as srv:
            client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
            for prompt in PROMPTS + [repeats]:
                r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0)
                want = generate("--prompt", prompt, "--max-tokens", "24", "--temperature", "0")
                assert r.choices[0].text == want, (spec, prompt, r.choices[0].text, want)
            sampled = ["--temperature", "0.8", "--top-p", "0.9", "--seed", "5"]
            want = generate("--prompt", repeats, "--max-tokens", "24", *sampled, *spec, "--draft-tokens", "4")
            chunks = client.completions.create(model=MODEL_ID, prompt=repeats, max_tokens=24, temperature=0.8,
                                               top_p=0.9, seed=5, stream=True)
            text = "".join(c.choices[0].text for c in chunks if c.choices)
            assert text == want, (spec, text, want)
            m = srv.metrics()
            assert m["wick_spec_accepted_tokens_total"] > 0, m
            assert m["wick_spec_drafted_tokens_total"] >= m["wick_spec_accepted_tokens_total"], m
        assert any("speculative (" in line and "accepted" in line for line in srv.log), srv.log[-5:]


def main():
    checks = Checks()
    with Server("--embedding-model", "minilm", "--parallel", "4") as srv:
        srv.model = __import__("serve_util").MODEL
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0)
        for t in (test_completions_greedy, test_chat_greedy, test_chat_system_turn, test_sampling_with_seed,
                  test_penalties, test_streaming, test_stop_strings, test_logprobs, test_logit_bias, test_prefix_reuse, test_models, test_embeddings,
                  test_client_errors):
            checks.run(t, client, srv)
    checks.run(test_speculative)
    checks.finish()


if __name__ == "__main__":
    main()
