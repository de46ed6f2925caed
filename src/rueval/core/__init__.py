"""The leaf utilities every layer may use: errors, paths, files, text, progress and memory."""
