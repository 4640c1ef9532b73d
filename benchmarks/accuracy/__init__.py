"""The analytics accuracy set: public data sets and the questions asked of them (`bench_accuracy.py`)."""
