"""Every word viz puts on screen (the string catalogue, by key) and the sentences computed from figures."""
