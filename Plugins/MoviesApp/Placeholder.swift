enum MoviesAppPlaceholder {}
