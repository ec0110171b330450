"""Stand-in for requests so that no example can reach the network: the runner places every file
the scripts would download, and any download attempt fails loudly here."""


def get(url, *args, **kwargs):
    raise RuntimeError(f"network disabled by tools/mxnet_examples: refusing to fetch {url}")
