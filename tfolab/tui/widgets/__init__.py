"""The UI's widgets: the ladder (and its pure layout), step panel, parameters, results."""
