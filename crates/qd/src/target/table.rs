//! Support tables rendered from the model (placeholder replaced below).
