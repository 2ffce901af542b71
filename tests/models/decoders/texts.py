"""Texts of the real-model parity tests: English, Chinese, and one longer than Gemma 3's
512-token sliding window (632 tokens for Gemma's tokenizer), so that its sliding layers hide keys."""

ENGLISH = "The capital of France is Paris. Attention lets every token look back at the tokens before it."

CHINESE = "我喜欢人工智能。北京是中国的首都，注意力机制让每个词都能看到它前面的词。"

_LONG = (
    "A language model reads a text one token at a time and, at every position, asks which of the earlier "
    "tokens matter for what comes next. Attention is the part of the network that answers this question. "
    "Each token is turned into a query, a key and a value. The query of the current token is compared with "
    "the key of every earlier token by a dot product; the results are scaled, passed through a softmax so "
    "that they are positive and sum to one, and used to mix the values. A head that has learned to look at "
    "the previous token puts almost all of its weight on the key just before the query. A head that tracks "
    "the subject of a sentence keeps looking at a noun many words back. In models such as Llama, Qwen, "
    "Mistral and Gemma the positions enter through rotary embeddings: before the dot product, each pair of "
    "features of the query and the key is rotated by an angle that grows with the position, at a speed that "
    "differs from pair to pair. Because both vectors are rotated, their dot product depends only on how far "
    "apart the two tokens are, not on where the pair sits in the text. Several query heads may share one key "
    "and value head, which makes the memory needed for generation several times smaller without changing "
    "how a single head computes its weights. Some layers see only a window of recent tokens: a query may "
    "attend to the keys less than a fixed distance before it, and everything older is hidden by the mask. "
    "Other layers see the whole text, so that information from far away can still reach the current token "
    "by passing through them. Gemma alternates five windowed layers with one global layer, and gives the "
    "two kinds different rotation speeds. It also normalises every query and key before the rotation, which "
    "keeps the scores in a sensible range however large the vectors grow during training. When the model "
    "generates text, the keys and values of the earlier tokens do not change, so they are kept in a cache "
    "and only the newest token is pushed through the network at each step. The attention of that new token "
    "over everything before it is exactly the row one would see in the full matrix, computed again from the "
    "start. To see what a model is doing, one can record every one of these numbers: the queries and keys "
    "before and after rotation, the mask that hides the future and the far past, the scores, the weights "
    "and the mixed values, layer by layer and head by head. Looking at them for a long text shows which "
    "heads read the previous token, which ones return to the first token as a resting place when nothing "
    "else is relevant, and which ones copy a word that appeared earlier in the same context. "
)
LONG = _LONG + "In short, the weights say where each token looks, and the values say what it brings back. " \
    + "The same questions can be asked of every layer, in every language the model knows. A careful reader " \
    + "checks each number twice: once against a slow computation in double precision, and once against the " \
    + "library that the model was published with, so that a picture of the attention is a picture of the real thing. " \
    + "That is the whole point of looking closely."
