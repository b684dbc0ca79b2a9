"""One module per admin API (see ``admin/api_handler.py``); ``admin/api_table.py`` registers them."""
