# Model-zoo end-to-end checks: one CTest case per generated model (tiny
# configuration), each run by onnxruntime and by dtrexec and compared, and
# one per model that trains it a few steps in dtrexec (the loss must fall)
# (tests/models_check.py; needs python3 with numpy, onnx, onnxruntime).
# Included from tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  foreach(model smallcnn resnet18 resnet50 vgg16 mobilenetv2 densenet121 unet transformer lstm_lm)
    add_test(NAME models_${model}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/models_check.py
              --models ${model} --dtrexec $<TARGET_FILE:dtrexec>)
    set_tests_properties(models_${model} PROPERTIES LABELS models TIMEOUT 300)
    add_test(NAME models_train_${model}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/models_check.py
              --models ${model} --train --dtrexec $<TARGET_FILE:dtrexec>)
    set_tests_properties(models_train_${model} PROPERTIES LABELS models TIMEOUT 300)
  endforeach()
  # Variants exercising other operators: Resize instead of ConvTranspose,
  # the opset-20 Gelu operator, Dropout nodes at inference.
  foreach(variant unet:upsample=nearest unet:upsample=linear transformer:gelu=op vgg16:dropout=0.5)
    string(REGEX REPLACE "[:=]" "_" test_name ${variant})
    add_test(NAME models_${test_name}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/models_check.py
              --models ${variant} --dtrexec $<TARGET_FILE:dtrexec>)
    set_tests_properties(models_${test_name} PROPERTIES LABELS models TIMEOUT 300)
  endforeach()
else()
  message(STATUS "python3 not found: model-zoo checks (tests/models_check.py) not registered")
endif()
