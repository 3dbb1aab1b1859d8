pub mod vectors;
