"""Questions about one table: the reading (`reader.read_table`), its query (`compile`), and the
values it needs from the store (`values.table_of`)."""
