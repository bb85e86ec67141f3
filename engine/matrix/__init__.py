"""The architecture matrix: tiny models built from configs (tiny), and each feature measured on them."""
