"""Each claim of the papers reproduced in its own folder: script, configs, records, table, plot, README."""
