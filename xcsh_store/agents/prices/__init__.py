"""List prices of models, for the costs of agents that record none: the table in force
(pricing), the per-request arithmetic and its tiers (pricing_model), the user's prices.toml and
the corrections shipped here (price_file, price_corrections.toml), the genai-prices dataset as
plain rows (flat_table), and the three kept on disk as one table (price_cache)."""
