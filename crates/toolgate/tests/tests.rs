mod check;
mod conformance;
mod detect;
mod fixtures;
mod stream;
