mod check;
mod conformance;
mod detect;
mod differential;
mod fixtures;
mod schema;
mod stream;
