mod detect;
mod fixtures;
mod stream;
