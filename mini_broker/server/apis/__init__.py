"""One module per API. Each exposes ``API: ApiSpec`` (key, version range, handler); ``ALL_APIS`` lists them."""
