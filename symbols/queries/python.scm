; Definitions in Python. A function defined directly in a class is a
; method (the parser qualifies it with the class).

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function
