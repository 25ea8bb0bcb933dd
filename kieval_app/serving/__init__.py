"""The server's machinery: the shared store, child processes, closing the sessions of
closed tabs, garbage collection, starting the server."""
