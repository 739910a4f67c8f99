"""The Spark data source."""
