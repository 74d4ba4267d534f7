"""What several test modules share: each module here has one job, and no test module imports
another (tests/test_layering.py); the older helpers beside the tests (session_builder.py,
team_server.py, …) are of the same kind."""
