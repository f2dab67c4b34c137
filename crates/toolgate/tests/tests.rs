mod detect;
mod fixtures;
